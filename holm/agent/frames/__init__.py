"""Frames: the tile hash grid, capture, PNG bands and the other encodings."""
