// The headless login page: `POST /api/login` sets the session cookie, then the chat opens.

import { api } from "./api.js";
import { $ } from "./dom.js";
import { errorText, t, translatePage } from "./i18n.js";

translatePage();

const form = $("#login-form");
const status = $("#login-status");

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("#login-name").value.trim();
  const password = $("#login-password").value;
  if (!name || !password) {
    (name ? $("#login-password") : $("#login-name")).focus();
    return;
  }
  status.textContent = "";
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  try {
    await api.login(name, password);
    window.location.replace("/");
  } catch (error) {
    // A wrong name or password is a sentence of its own; anything else (429 after repeated
    // failures, an unreachable server) is the reason in the UI's language.
    status.textContent = error.status === 401 ? t("login.failed") : t("login.error", { reason: errorText(error) });
    $("#login-password").select();
  } finally {
    button.disabled = false;
  }
});

$("#login-name").focus();
