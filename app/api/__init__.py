"""The HTTP layer: routes that translate between HTTP and app.index."""
