"""browser-server: browser_use, the browser-use agent on Chromium."""
