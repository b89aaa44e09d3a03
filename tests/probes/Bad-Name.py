"""A probe file whose name is not a valid library name: reported, never loaded."""
