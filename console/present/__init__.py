"""How pages show things: messages decoded and as JSON, lag status, lists filtered and sorted, the navigation."""
