// A tab in the background still tells the user that the character wrote (a reminder comes
// as its own impulse): the page title and the favicon count what arrived unseen, and, when
// the user switched them on (a toggle, so the browser asks on a click), a notification
// shows each one. Seen again, the count goes.

import { $ } from "./dom.js";
import { t } from "./i18n.js";

const ICON = "/static/icon.svg";
const BADGE = (count) => `/static/badge/${count}.svg`;
const PREFERENCE = "novaberg:notify";

export class Attention {
  constructor({ title, name, doc = document, storage = window.localStorage }) {
    this.title = title;
    this.name = name;
    this.doc = doc;
    this.storage = storage;
    this.unseen = 0;
    this.toggle = $("#notify-toggle");
    this.status = $("#notify-status");
    const seen = () => { if (this.visible()) this.clear(); };
    doc.addEventListener("visibilitychange", seen);
    window.addEventListener("focus", seen);
    this.toggle.checked = this.wanted() && this.permission() === "granted";
    this.toggle.addEventListener("change", () => this.onToggle());
    this.showState();
  }

  /** The user looks at this tab. */
  visible() {
    return this.doc.visibilityState === "visible" && this.doc.hasFocus();
  }

  /** The character said something (`entry` of the conversation), live. */
  arrived(entry) {
    if (this.visible()) return;
    this.unseen += 1;
    this.show();
    if (this.toggle.checked && this.permission() === "granted") this.notify(entry);
  }

  clear() {
    if (!this.unseen) return;
    this.unseen = 0;
    this.show();
  }

  show() {
    this.doc.title = this.unseen ? `(${this.unseen}) ${this.title}` : this.title;
    const link = this.doc.querySelector("link[rel='icon']");
    if (link) link.href = this.unseen ? BADGE(this.unseen) : ICON;
  }

  notify(entry) {
    try {
      const title = entry.origin === "own_impulse" ? t("msg.ownImpulse", { name: this.name }) : this.name;
      const note = new window.Notification(title, { body: entry.text, tag: `novaberg:${entry.key}`, icon: ICON });
      note.onclick = () => {
        window.focus();
        note.close();
      };
    } catch (error) {
      console.warn("notification failed", error);
    }
  }

  permission() {
    return "Notification" in window ? window.Notification.permission : "unsupported";
  }

  wanted() {
    try {
      return this.storage.getItem(PREFERENCE) === "on";
    } catch {
      return false;
    }
  }

  async onToggle() {
    const on = this.toggle.checked;
    if (on && this.permission() === "default") {
      // Asked here, on the user's click: a browser refuses to ask otherwise.
      await window.Notification.requestPermission();
    }
    const allowed = this.permission() === "granted";
    this.toggle.checked = on && allowed;
    try {
      this.storage.setItem(PREFERENCE, this.toggle.checked ? "on" : "off");
    } catch {
      // not kept across a reload; the toggle still works now
    }
    this.showState(on && !allowed);
  }

  showState(refused = false) {
    const permission = this.permission();
    let text = "";
    if (permission === "unsupported") text = t("notify.unsupported");
    else if (permission === "denied" || refused) text = t("notify.denied");
    this.toggle.disabled = permission === "unsupported";
    this.status.textContent = text;
  }
}
