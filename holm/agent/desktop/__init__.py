"""The box's desktop: bringing it up, its features, the agent's children, exec,
recording, viewers, the catalog's apps."""
