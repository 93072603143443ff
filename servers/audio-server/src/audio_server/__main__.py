"""audio-server: the mcp_transcribe_audio tool, served by media-audio-server's implementation."""

from .server import main

main()
