"""The web page's files (templates/, static/) and what the server needs to render it without JavaScript."""
