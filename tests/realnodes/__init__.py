"""The real-node lane: every test here is marked ``integration`` and ``realnodes``."""
