"""Projections of the verdict model: status, text report, JSON, metrics, MCP."""
