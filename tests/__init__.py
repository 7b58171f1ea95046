"""The project's tests; the folders below mirror the source packages (docs/testing.md, 'Layout')."""
