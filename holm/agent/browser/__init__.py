"""A screen's Chromium through its DevTools: pages, tabs, the DevTools bridge for
holmd's relay."""
