"""Media files an agent names, the ffmpeg-family tools that read them, and images for vision models."""
