"""A page's WebRTC attempt and the loopback listeners that would see it, for the browsers' tests.

    with WebRtcTargets() as targets:
        page_script = targets.function()        # "async () => ..." for an evaluate tool or a <script>
        ...
        assert targets.arrived() == {"udp": 0, "tcp": 0}

The function opens a peer connection whose STUN and TURN servers are the listeners, creates a data
channel and an offer, and waits while ICE gathers candidates: that is when Chromium sends STUN
binding requests (UDP) and opens TURN connections (TCP).
"""

from __future__ import annotations

import socket


class WebRtcTargets:
    """A UDP socket and a TCP listener on loopback; `tcp_host` may be another loopback address."""

    def __init__(self, tcp_host: str = "127.0.0.1") -> None:
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.tcp = socket.socket()
        self.tcp.bind((tcp_host, 0))
        self.tcp.listen()
        for sock in (self.udp, self.tcp):
            sock.setblocking(False)

    def function(self, wait_ms: int = 3000) -> str:
        udp_port = self.udp.getsockname()[1]
        tcp_host, tcp_port = self.tcp.getsockname()
        servers = [
            f"{{urls: 'stun:127.0.0.1:{udp_port}'}}",
            f"{{urls: 'turn:127.0.0.1:{udp_port}?transport=udp', username: 'u', credential: 'p'}}",
            f"{{urls: 'turn:{tcp_host}:{tcp_port}?transport=tcp', username: 'u', credential: 'p'}}",
        ]
        return (
            "async () => { const pc = new RTCPeerConnection({iceServers: [" + ", ".join(servers) + "]}); "
            "pc.createDataChannel('probe'); await pc.setLocalDescription(await pc.createOffer()); "
            f"await new Promise(done => setTimeout(done, {wait_ms})); pc.close(); return 'webrtc tried'; }}"
        )

    def arrived(self) -> dict[str, int]:
        """How many UDP datagrams and TCP connections reached the listeners so far."""
        counts = {"udp": 0, "tcp": 0}
        try:
            while True:
                self.udp.recv(4096)
                counts["udp"] += 1
        except BlockingIOError:
            pass
        try:
            while True:
                self.tcp.accept()[0].close()
                counts["tcp"] += 1
        except BlockingIOError:
            pass
        return counts

    def __enter__(self) -> WebRtcTargets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.udp.close()
        self.tcp.close()
