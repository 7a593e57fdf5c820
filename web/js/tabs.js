// Tabs as the WAI-ARIA tabs pattern describes them: one tab in the tab order (the selected
// one), Left/Right (and Up/Down) move to the next tab and show it, Home and End to the first
// and last; each tab names its panel with aria-controls and only the selected panel shows.

export class Tabs {
  /** `list`: the element with role="tablist"; `onShow(name)` after a tab is shown (its
   * `data-tab` name). */
  constructor(list, { onShow = () => {} } = {}) {
    this.tabs = [...list.querySelectorAll('[role="tab"]')];
    this.onShow = onShow;
    for (const tab of this.tabs) tab.addEventListener("click", () => this.show(tab.dataset.tab));
    list.addEventListener("keydown", (event) => this.onKey(event));
  }

  get current() {
    const selected = this.tabs.find((tab) => tab.getAttribute("aria-selected") === "true");
    return selected ? selected.dataset.tab : null;
  }

  /** Show the tab called `name` (its panel; the others' are hidden); `focus` moves the
   * keyboard focus onto it. */
  show(name, { focus = false } = {}) {
    const target = this.tabs.find((tab) => tab.dataset.tab === name) || this.tabs[0];
    for (const tab of this.tabs) {
      const selected = tab === target;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      document.getElementById(tab.getAttribute("aria-controls")).hidden = !selected;
    }
    if (focus) target.focus();
    this.onShow(target.dataset.tab);
  }

  onKey(event) {
    const index = this.tabs.indexOf(document.activeElement);
    if (index < 0) return;
    const last = this.tabs.length - 1;
    const next = {
      ArrowRight: index === last ? 0 : index + 1,
      ArrowDown: index === last ? 0 : index + 1,
      ArrowLeft: index === 0 ? last : index - 1,
      ArrowUp: index === 0 ? last : index - 1,
      Home: 0,
      End: last,
    }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    this.show(this.tabs[next].dataset.tab, { focus: true });
  }
}
