"""Viewers: tickets, the RFB relay between a viewer's WebSocket and a screen's x11vnc, and
what a person does through it."""
