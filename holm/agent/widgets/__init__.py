"""Native widgets through AT-SPI, and the box's accessibility bus."""
