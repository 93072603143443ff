#!/usr/bin/env bash
# The vnc sidecar of docker-compose.yml: a virtual display for the gateway's browsers (its socket
# reaches the gateway through the shared /tmp/.X11-unix volume), x11vnc serving it on 5900, and
# noVNC on 5901 so a web browser can watch: http://localhost:5901/vnc.html
set -euo pipefail
display="${VNC_DISPLAY:-:99}"
number="${display#:}"
# A restarted container keeps its /tmp: a stale lock would stop Xvfb.
rm -f "/tmp/.X${number}-lock" "/tmp/.X11-unix/X${number}"

# MIT-SHM is off: the gateway's browsers live in another container, whose shared memory the
# display cannot see. -ac: the socket, only in the shared volume, is the access control.
Xvfb "$display" -screen 0 "${VNC_GEOMETRY:-1280x1024x24}" -nolisten tcp -ac -extension MIT-SHM &
for _ in $(seq 100); do
  [ -S "/tmp/.X11-unix/X${number}" ] && break
  sleep 0.1
done
[ -S "/tmp/.X11-unix/X${number}" ] || { echo "vnc: Xvfb did not start on $display" >&2; exit 1; }

auth=(-nopw)
if [ -n "${VNC_PASSWORD:-}" ]; then
  mkdir -p "$HOME/.vnc"
  x11vnc -storepasswd "$VNC_PASSWORD" "$HOME/.vnc/passwd" >/dev/null
  auth=(-rfbauth "$HOME/.vnc/passwd")
fi
x11vnc -display "$display" -forever -shared -noshm -quiet -rfbport 5900 "${auth[@]}" &
websockify --web /usr/share/novnc 5901 127.0.0.1:5900 &

# One process ending ends the container, so compose's restart policy brings all three back.
wait -n
exit 1
