"""Pure parsers: log text plus a LogProfile -> measurements."""
