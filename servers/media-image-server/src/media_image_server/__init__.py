"""media-image-server: OCR, metadata and vision-model questions about images."""
