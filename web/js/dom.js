// A small element builder: h("li", {class: "msg", dataset: {key}}, child, "text", …).
// Text is always set as text (never as HTML): what a user or model wrote cannot inject markup.

export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}

/** Show a status line under a form; `kind` is "ok", "error" or "" (neutral). */
export function setStatus(node, text, kind = "") {
  node.textContent = text;
  node.classList.toggle("ok", kind === "ok");
  node.classList.toggle("error", kind === "error");
}
