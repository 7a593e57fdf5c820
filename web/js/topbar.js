// The chat page's top bar below 1024 px: its actions (settings, writing profile, log out)
// fold into a menu behind one button, so that the bar stays one line on a phone. A
// disclosure: the button's aria-expanded says whether the menu shows; Escape, a click
// elsewhere or choosing an item closes it, and Escape gives the focus back to the button.

import { $ } from "./dom.js";

export class TopbarMenu {
  constructor({ button = $("#menu-toggle"), menu = $("#topbar-actions") } = {}) {
    this.button = button;
    this.menu = menu;
    button.addEventListener("click", () => this.setOpen(!this.isOpen()));
    menu.addEventListener("click", (event) => {
      if (event.target.closest("button, a")) this.setOpen(false);
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.isOpen()) {
        this.setOpen(false);
        this.button.focus();
      }
    });
    document.addEventListener("pointerdown", (event) => {
      if (this.isOpen() && !menu.contains(event.target) && !button.contains(event.target)) this.setOpen(false);
    });
  }

  isOpen() {
    return this.menu.classList.contains("open");
  }

  setOpen(open) {
    this.menu.classList.toggle("open", open);
    this.button.setAttribute("aria-expanded", String(open));
    if (open) {
      const first = [...this.menu.querySelectorAll("button, a")].find((node) => !node.hidden);
      if (first) first.focus();
    }
  }
}
