"""Conformance tests that ask the real API server (integration lane)."""
