"""People in the room (issue 22) in the browser: seats, the live room panel, its controls."""
