"""This language's test runners: a log parser (and report reader) each."""
