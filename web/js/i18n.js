// German and English, chosen by the browser's language (navigator.languages, then
// navigator.language). Everything a person reads comes from here; the character's own words
// are shown as they arrive.

const STRINGS = {
  en: {
    "app.title": "Novaberg",
    "skip": "Skip to the message box",
    "chat.log": "Conversation with {name}",
    "conn.online": "Connected",
    "conn.connecting": "Connecting…",
    "conn.reconnecting": "Connection lost — reconnecting…",
    "offline.banner": "Offline mode: no language model is active. {name} answers with simple built-in replies. Choose a model in Settings.",
    "offline.open": "Open settings",
    "composer.label": "Your message",
    "composer.placeholder": "Write to {name}… (Enter sends, Shift+Enter for a new line)",
    "composer.send": "Send",
    "msg.you": "You",
    "msg.otherDevice": "You (another tab or device)",
    "msg.sending": "sending…",
    "msg.pending": "waiting for an answer",
    "msg.unsent": "not sent",
    "msg.failed": "no answer",
    "msg.retry": "Send again",
    "msg.answerOther": "answer to a message from another tab or device",
    "msg.ownImpulse": "{name} on her own",
    "msg.continue": "{name} continues",
    "msg.unknownOrigin": "occasion unknown",
    "msg.fromOtherPlaceholder": "(a message sent from another tab or device)",
    "summary.title": "Earlier in this conversation",
    "stage.queued": "{name} will answer soon…",
    "stage.perceiving": "{name} is perceiving…",
    "stage.thinking": "{name} is thinking…",
    "stage.acting": "{name} is taking care of it…",
    "stage.writing": "{name} is writing…",
    "stage.checking": "{name} is checking her answer…",
    "failure.title": "No answer to this message",
    "failure.titleMany": "No answer to these {count} messages",
    "failure.impulse": "{name} wanted to say something but could not",
    "failure.reason": "Reason: {reason}",
    "failure.resend": "Resend",
    "failure.resent": "Sent again",
    "reason.model_timeout": "the language model did not answer in time",
    "reason.model_unavailable": "the language model cannot be reached",
    "reason.model_http_error": "the language model server reported an error",
    "reason.model_auth_failed": "the language model refused the API key",
    "reason.model_not_found": "the model was not found on the server",
    "reason.model_bad_response": "the language model server answered something unreadable",
    "reason.model_bad_output": "the language model's answer could not be used",
    "reason.rate_limited": "the language model is rate limited",
    "reason.prompt_budget_exceeded": "the conversation does not fit the model's context window",
    "reason.model_metadata_unknown": "the model's context window is unknown",
    "reason.model_context_too_small": "the model's context window is too small",
    "reason.privacy_blocked": "the answer was blocked by the privacy gateway",
    "reason.tribunal_rejected": "the answer did not pass the checks",
    "reason.lock_timeout": "the model was busy for too long",
    "reason.too_many_attempts": "the turn was interrupted too often",
    "reason.not_found": "the server no longer knows this message",
    "reason.session_reset": "the conversation was reset",
    "reason.crashed": "the server stopped while working on it",
    "reason.internal_error": "an internal error occurred",
    "reason.impulse_without_thought": "the impulse had no thought",
    "reason.unknown": "unknown",
    "send.error": "Could not send: {reason}",
    "send.network": "the server cannot be reached",
    "send.message_too_long": "the message is too long",
    "send.empty_message": "the message is empty",
    "send.rate_limited": "too many messages at once; send it again in a moment",
    "send.unauthorized": "you are no longer logged in",
    "send.unknown_character": "this character does not exist here",
    "panel.toggle": "Panels",
    "panel.close": "Close panels",
    "panel.state": "How {name} feels",
    "state.emotion": "Emotion",
    "state.arousal": "Arousal",
    "state.mode": "Mode",
    "state.tone": "Tone",
    "state.none": "—",
    "panel.lists": "Lists",
    "lists.empty": "No lists yet.",
    "lists.unavailable": "Lists are not available on this server.",
    "panel.reminders": "Reminders",
    "reminders.empty": "No reminders.",
    "reminders.unavailable": "Reminders are not available on this server.",
    "reminders.text": "Reminder",
    "reminders.due": "When",
    "reminders.add": "Add reminder",
    "reminders.added": "Reminder added.",
    "reminders.done": "done",
    "panel.session": "Conversation",
    "session.reset": "Reset conversation…",
    "session.confirmTitle": "Reset the conversation?",
    "session.confirmText": "{name} forgets this conversation (the short-term memory and its summary). This cannot be undone.",
    "session.confirm": "Reset",
    "session.cancel": "Cancel",
    "session.wasReset": "The conversation was reset.",
    "settings.open": "Settings",
    "settings.title": "Language model",
    "settings.provider": "Provider",
    "settings.provider.offline": "Offline (built in, no model)",
    "settings.provider.ollama": "Ollama",
    "settings.provider.openai": "OpenAI-compatible (llama.cpp, vLLM, LM Studio, OpenRouter)",
    "settings.url": "Server URL",
    "settings.model": "Model",
    "settings.apiKey": "API key",
    "settings.apiKeySet": "A key is stored. Type a new one to replace it.",
    "settings.apiKeyNone": "No key stored.",
    "settings.remote": "Remote provider (mask names, e-mails, phone numbers and addresses)",
    "settings.detected": "Found on this machine",
    "settings.detectedNone": "No local model server was found.",
    "settings.use": "Use",
    "settings.test": "Test connection",
    "settings.testing": "Testing…",
    "settings.testOk": "Connection works.",
    "settings.testFailed": "Connection failed: {reason}",
    "settings.save": "Save",
    "settings.saved": "Saved.",
    "settings.close": "Close",
    "settings.current": "Active now: {provider}",
    "settings.readOnly": "This server does not allow changing the model from here; set it with flags or environment variables.",
    "logout": "Log out",
    "error.generic": "Something went wrong: {reason}",
    "login.title": "Log in to Novaberg",
    "login.name": "User name",
    "login.password": "Password",
    "login.submit": "Log in",
    "login.failed": "Unknown user or wrong password.",
    "login.error": "Login failed: {reason}",
    "profile.open": "Writing profile",
    "login.desktopHint": "Running Novaberg on your own computer? Open the address it printed when it started.",
  },
  de: {
    "app.title": "Novaberg",
    "skip": "Zum Eingabefeld springen",
    "chat.log": "Gespräch mit {name}",
    "conn.online": "Verbunden",
    "conn.connecting": "Verbinde…",
    "conn.reconnecting": "Verbindung verloren — verbinde neu…",
    "offline.banner": "Offline-Modus: Es ist kein Sprachmodell aktiv. {name} antwortet mit einfachen eingebauten Sätzen. Wähle in den Einstellungen ein Modell.",
    "offline.open": "Einstellungen öffnen",
    "composer.label": "Deine Nachricht",
    "composer.placeholder": "Schreib {name}… (Enter sendet, Umschalt+Enter für eine neue Zeile)",
    "composer.send": "Senden",
    "msg.you": "Du",
    "msg.otherDevice": "Du (anderer Tab oder anderes Gerät)",
    "msg.sending": "wird gesendet…",
    "msg.pending": "wartet auf Antwort",
    "msg.unsent": "nicht gesendet",
    "msg.failed": "keine Antwort",
    "msg.retry": "Erneut senden",
    "msg.answerOther": "Antwort auf eine Nachricht aus einem anderen Tab oder Gerät",
    "msg.ownImpulse": "{name} von sich aus",
    "msg.continue": "{name} setzt fort",
    "msg.unknownOrigin": "Anlass unbekannt",
    "msg.fromOtherPlaceholder": "(eine Nachricht aus einem anderen Tab oder Gerät)",
    "summary.title": "Früher in diesem Gespräch",
    "stage.queued": "{name} antwortet gleich…",
    "stage.perceiving": "{name} nimmt wahr…",
    "stage.thinking": "{name} denkt nach…",
    "stage.acting": "{name} kümmert sich darum…",
    "stage.writing": "{name} schreibt…",
    "stage.checking": "{name} prüft ihre Antwort…",
    "failure.title": "Keine Antwort auf diese Nachricht",
    "failure.titleMany": "Keine Antwort auf diese {count} Nachrichten",
    "failure.impulse": "{name} wollte etwas sagen, konnte aber nicht",
    "failure.reason": "Grund: {reason}",
    "failure.resend": "Erneut senden",
    "failure.resent": "Erneut gesendet",
    "reason.model_timeout": "das Sprachmodell hat nicht rechtzeitig geantwortet",
    "reason.model_unavailable": "das Sprachmodell ist nicht erreichbar",
    "reason.model_http_error": "der Modellserver hat einen Fehler gemeldet",
    "reason.model_auth_failed": "das Sprachmodell hat den API-Schlüssel abgelehnt",
    "reason.model_not_found": "das Modell wurde auf dem Server nicht gefunden",
    "reason.model_bad_response": "der Modellserver hat Unlesbares geantwortet",
    "reason.model_bad_output": "die Antwort des Sprachmodells war nicht verwendbar",
    "reason.rate_limited": "das Sprachmodell begrenzt gerade die Anfragen",
    "reason.prompt_budget_exceeded": "das Gespräch passt nicht in das Kontextfenster des Modells",
    "reason.model_metadata_unknown": "das Kontextfenster des Modells ist unbekannt",
    "reason.model_context_too_small": "das Kontextfenster des Modells ist zu klein",
    "reason.privacy_blocked": "die Antwort wurde vom Datenschutz-Filter blockiert",
    "reason.tribunal_rejected": "die Antwort hat die Prüfungen nicht bestanden",
    "reason.lock_timeout": "das Modell war zu lange belegt",
    "reason.too_many_attempts": "der Durchlauf wurde zu oft unterbrochen",
    "reason.not_found": "der Server kennt diese Nachricht nicht mehr",
    "reason.session_reset": "das Gespräch wurde zurückgesetzt",
    "reason.crashed": "der Server wurde mitten in der Arbeit beendet",
    "reason.internal_error": "ein interner Fehler ist aufgetreten",
    "reason.impulse_without_thought": "dem Impuls fehlte der Gedanke",
    "reason.unknown": "unbekannt",
    "send.error": "Senden fehlgeschlagen: {reason}",
    "send.network": "der Server ist nicht erreichbar",
    "send.message_too_long": "die Nachricht ist zu lang",
    "send.empty_message": "die Nachricht ist leer",
    "send.rate_limited": "zu viele Nachrichten auf einmal; sende sie gleich noch einmal",
    "send.unauthorized": "du bist nicht mehr angemeldet",
    "send.unknown_character": "diese Figur gibt es hier nicht",
    "panel.toggle": "Seitenleiste",
    "panel.close": "Seitenleiste schließen",
    "panel.state": "Wie es {name} geht",
    "state.emotion": "Gefühl",
    "state.arousal": "Erregung",
    "state.mode": "Modus",
    "state.tone": "Ton",
    "state.none": "—",
    "panel.lists": "Listen",
    "lists.empty": "Noch keine Listen.",
    "lists.unavailable": "Listen gibt es auf diesem Server nicht.",
    "panel.reminders": "Erinnerungen",
    "reminders.empty": "Keine Erinnerungen.",
    "reminders.unavailable": "Erinnerungen gibt es auf diesem Server nicht.",
    "reminders.text": "Erinnerung",
    "reminders.due": "Wann",
    "reminders.add": "Erinnerung anlegen",
    "reminders.added": "Erinnerung angelegt.",
    "reminders.done": "erledigt",
    "panel.session": "Gespräch",
    "session.reset": "Gespräch zurücksetzen…",
    "session.confirmTitle": "Gespräch zurücksetzen?",
    "session.confirmText": "{name} vergisst dieses Gespräch (das Kurzzeitgedächtnis und seine Zusammenfassung). Das lässt sich nicht rückgängig machen.",
    "session.confirm": "Zurücksetzen",
    "session.cancel": "Abbrechen",
    "session.wasReset": "Das Gespräch wurde zurückgesetzt.",
    "settings.open": "Einstellungen",
    "settings.title": "Sprachmodell",
    "settings.provider": "Anbieter",
    "settings.provider.offline": "Offline (eingebaut, kein Modell)",
    "settings.provider.ollama": "Ollama",
    "settings.provider.openai": "OpenAI-kompatibel (llama.cpp, vLLM, LM Studio, OpenRouter)",
    "settings.url": "Server-Adresse",
    "settings.model": "Modell",
    "settings.apiKey": "API-Schlüssel",
    "settings.apiKeySet": "Ein Schlüssel ist hinterlegt. Tippe einen neuen ein, um ihn zu ersetzen.",
    "settings.apiKeyNone": "Kein Schlüssel hinterlegt.",
    "settings.remote": "Entfernter Anbieter (Namen, E-Mails, Telefonnummern und Adressen maskieren)",
    "settings.detected": "Auf diesem Rechner gefunden",
    "settings.detectedNone": "Kein lokaler Modellserver gefunden.",
    "settings.use": "Übernehmen",
    "settings.test": "Verbindung testen",
    "settings.testing": "Teste…",
    "settings.testOk": "Die Verbindung funktioniert.",
    "settings.testFailed": "Verbindung fehlgeschlagen: {reason}",
    "settings.save": "Speichern",
    "settings.saved": "Gespeichert.",
    "settings.close": "Schließen",
    "settings.current": "Aktiv: {provider}",
    "settings.readOnly": "Dieser Server erlaubt keinen Modellwechsel von hier; setze ihn über Optionen oder Umgebungsvariablen.",
    "logout": "Abmelden",
    "error.generic": "Etwas ist schiefgegangen: {reason}",
    "login.title": "Bei Novaberg anmelden",
    "login.name": "Benutzername",
    "login.password": "Passwort",
    "login.submit": "Anmelden",
    "login.failed": "Unbekannter Benutzer oder falsches Passwort.",
    "login.error": "Anmeldung fehlgeschlagen: {reason}",
    "profile.open": "Schreibprofil",
    "login.desktopHint": "Läuft Novaberg auf deinem eigenen Rechner? Öffne die Adresse, die es beim Start ausgegeben hat.",
  },
};

/** The UI language for a list of browser languages: German for any `de…`, else English. */
export function pickLanguage(languages) {
  for (const tag of languages || []) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (base in STRINGS) return base;
  }
  return "en";
}

export const lang = pickLanguage(
  typeof navigator === "undefined" ? [] : [...(navigator.languages || []), navigator.language],
);

/** The string for `key` with `{name}` placeholders filled from `params`. */
export function t(key, params = {}) {
  const template = STRINGS[lang][key] ?? STRINGS.en[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (match, name) => (name in params ? String(params[name]) : match));
}

/** A reason code as a person reads it; an unknown code is shown as it is. */
export function reasonText(code) {
  if (!code) return t("reason.unknown");
  const key = `reason.${code}`;
  const text = t(key);
  return text === key ? code : text;
}

/** Fill every `data-i18n*` attribute below `root` and set the document language. */
export function translatePage(root = document, params = {}) {
  document.documentElement.lang = lang;
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n, params);
  for (const node of root.querySelectorAll("[data-i18n-placeholder]")) {
    node.placeholder = t(node.dataset.i18nPlaceholder, params);
  }
  for (const node of root.querySelectorAll("[data-i18n-label]")) {
    node.setAttribute("aria-label", t(node.dataset.i18nLabel, params));
  }
  for (const node of root.querySelectorAll("[data-i18n-title]")) node.title = t(node.dataset.i18nTitle, params);
}

const timeFormat = new Intl.DateTimeFormat(lang, { hour: "2-digit", minute: "2-digit" });
const dateTimeFormat = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });

/** Epoch seconds as a short local time. */
export function formatTime(epochSeconds) {
  return timeFormat.format(new Date(epochSeconds * 1000));
}

export function formatDateTime(epochSeconds) {
  return dateTimeFormat.format(new Date(epochSeconds * 1000));
}

/** Add a page's own strings (`{en: {…}, de: {…}}`), e.g. those of the profile page. */
export function addStrings(table) {
  for (const [language, strings] of Object.entries(table)) Object.assign(STRINGS[language] ??= {}, strings);
}
