from mcpsniff.core.escape import terminal_safe, terminal_safe_lines


def test_plain_text_is_returned_unchanged() -> None:
    text = 'tools/call {"a": "b\\n"} — 日本語 ✓'
    assert terminal_safe(text) is text


def test_osc_title_and_clipboard_sequences_are_shown_not_sent() -> None:
    assert terminal_safe("\x1b]0;pwned\x07x") == "\\x1b]0;pwned\\x07x"
    assert terminal_safe("\x1b]52;c;ZXZpbA==\x07") == "\\x1b]52;c;ZXZpbA==\\x07"


def test_c1_del_newline_and_bidi_controls_are_escaped() -> None:
    assert terminal_safe("a\x9bb\x7fc") == "a\\x9bb\\x7fc"
    assert terminal_safe("line\nforged") == "line\\x0aforged"
    assert terminal_safe("\u202eabc\u2066\u2069\u200f") == "\\u202eabc\\u2066\\u2069\\u200f"


def test_lines_keep_their_breaks_and_lose_their_controls() -> None:
    assert terminal_safe_lines("a\x1b[2J\nb") == ["a\\x1b[2J", "b"]


def test_lone_surrogates_are_shown_as_escapes_so_the_line_can_be_printed() -> None:
    text = terminal_safe("tool \ud800 and \udfff end")
    assert text == "tool \\ud800 and \\udfff end"
    text.encode("utf-8")  # a lone surrogate would raise UnicodeEncodeError here
    assert terminal_safe("emoji 😀 stays") == "emoji 😀 stays"
