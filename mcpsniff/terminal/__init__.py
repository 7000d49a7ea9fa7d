"""Records and traffic text as a person reads them: the timeline, the report, safe output."""
