"""image-server: the mcp_image_recognition tool, served by media-image-server's implementation."""
