// The WebSocket to `/api/ws`, kept open: after a drop it reconnects with exponential backoff
// and jitter, and tells its owner each time it is (re)connected, so the owner can resync
// from the session and the open turns (design §5).

const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 15000;
// A connection that stayed up this long counts as healthy: the next drop starts the
// backoff from the beginning again.
const STABLE_AFTER_MS = 10000;

export function backoffDelay(attempt, random = Math.random) {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** attempt);
  return Math.round(base / 2 + random() * (base / 2));
}

export class ReconnectingSocket {
  /**
   * `onMessage(object)`: each JSON message. `onStatus("connecting"|"online"|"reconnecting")`.
   * `onOpen(isReconnect)`: after each successful handshake. `onRepeatedFailure(attempt)`:
   * after each closed or failed connection from the third in a row on (one that stayed up
   * `STABLE_AFTER_MS` resets the count); it may check the login and navigate away.
   */
  constructor({ url, onMessage, onStatus = () => {}, onOpen = () => {}, onRepeatedFailure = () => {} }) {
    this.url = url;
    this.onMessage = onMessage;
    this.onStatus = onStatus;
    this.onOpen = onOpen;
    this.onRepeatedFailure = onRepeatedFailure;
    this.attempt = 0;
    this.everOpened = false;
    this.ws = null;
    this.timer = null;
    this.openedAt = 0;
    this.stopped = false;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close(1000, "page closed");
  }

  /** Close the current connection as if the network dropped it (the client reconnects). */
  drop() {
    if (this.ws) this.ws.close(4000, "dropped by the client");
  }

  /** The network is back (`online`): reconnect now unless a socket is open or opening. */
  reconnectNow() {
    if (this.stopped) return;
    const state = this.ws ? this.ws.readyState : WebSocket.CLOSED;
    if (state === WebSocket.OPEN || state === WebSocket.CONNECTING) return;
    this.connect();
  }

  /**
   * Open a new socket. One socket at a time: a previous one is closed first, and events of
   * a socket that is no longer `this.ws` are ignored (a late message or open of a replaced
   * socket must not reach the owner).
   */
  connect() {
    clearTimeout(this.timer);
    const previous = this.ws;
    this.ws = null;
    if (previous) previous.close(1000, "replaced");
    this.onStatus(this.everOpened ? "reconnecting" : "connecting");
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", () => {
      if (this.ws !== ws) return;
      const isReconnect = this.everOpened;
      this.everOpened = true;
      this.openedAt = Date.now();
      this.onStatus("online");
      this.onOpen(isReconnect);
    });
    ws.addEventListener("message", (event) => {
      if (this.ws !== ws) return;
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        console.warn("unreadable websocket message", event.data);
        return;
      }
      this.onMessage(data);
    });
    ws.addEventListener("close", () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return;
      if (this.openedAt && Date.now() - this.openedAt > STABLE_AFTER_MS) this.attempt = 0;
      this.openedAt = 0;
      const delay = backoffDelay(this.attempt);
      this.attempt += 1;
      if (this.attempt >= 3) this.onRepeatedFailure(this.attempt);
      this.onStatus("reconnecting");
      this.timer = setTimeout(() => this.connect(), delay);
    });
  }
}
