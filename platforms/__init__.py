"""Platform data: detection tables and overlays."""
