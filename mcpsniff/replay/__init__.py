"""Replay a recorded MCP session: serve it as a mock server, or drive a live server with it.

The Python API for test suites is in ``mcpsniff.replay.fixture``
(``serve_command``, ``ReplayServers`` and the ``replay_server`` pytest fixture).
"""
