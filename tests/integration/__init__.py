"""The integration lane: every test here is marked ``integration`` (a real API server)."""
