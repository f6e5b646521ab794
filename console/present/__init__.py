"""How pages show things: messages decoded (and masked for whom), messages as JSON, lag status, lists
filtered and sorted, the navigation."""
