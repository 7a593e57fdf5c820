// The wait clock of the stage indicator (web/js/wait.js): when the seconds show, what counts as
// usual, and when a turn is "longer than usual".
import assert from "node:assert/strict";
import { test } from "node:test";

import { SHOW_SECONDS_AFTER, SLOW_FLOOR_SECONDS, USUAL_WITHOUT_HISTORY, WaitClock } from "../../web/js/wait.js";

function memoryStorage(initial = {}) {
  const data = { ...initial };
  return { getItem: (k) => (k in data ? data[k] : null), setItem: (k, v) => { data[k] = String(v); }, data };
}

function clockAt(start = 100) {
  const time = { now: start };
  return { time, now: () => time.now };
}

test("a short wait shows no seconds, a longer one its whole seconds", () => {
  const { time, now } = clockAt();
  const clock = new WaitClock({ now });
  assert.equal(clock.shownSeconds(), null);
  clock.waiting();
  time.now += SHOW_SECONDS_AFTER - 0.1;
  assert.equal(clock.shownSeconds(), null);
  time.now += 1.5;
  assert.equal(clock.shownSeconds(), SHOW_SECONDS_AFTER + 1);
});

test("waiting twice keeps the first start", () => {
  const { time, now } = clockAt();
  const clock = new WaitClock({ now });
  clock.waiting();
  time.now += 4;
  clock.waiting();
  assert.equal(clock.elapsed(), 4);
});

test("without history a wait is slow only past the default's double", () => {
  const { time, now } = clockAt();
  const clock = new WaitClock({ now, storage: memoryStorage() });
  clock.waiting();
  time.now += 2 * USUAL_WITHOUT_HISTORY - 1;
  assert.equal(clock.slow(), false);
  time.now += 2;
  assert.equal(clock.slow(), true);
});

test("answered waits become the usual; failures do not", () => {
  const { time, now } = clockAt();
  const storage = memoryStorage();
  const clock = new WaitClock({ now, storage });
  for (const seconds of [2, 3, 4]) {
    clock.waiting();
    time.now += seconds;
    clock.answered();
  }
  clock.waiting();
  time.now += 60;
  clock.ended(); // a failure: not remembered
  assert.equal(clock.usual(), 3);
  assert.equal(clock.slow(), false); // nothing waits now
  clock.waiting();
  time.now += SLOW_FLOOR_SECONDS + 0.5; // past the floor, under 2 × 3 s
  assert.equal(clock.slow(), false);
  time.now += 1;
  assert.equal(clock.slow(), true);
});

test("the floor holds for fast histories, and a broken stored value is ignored", () => {
  const { time, now } = clockAt();
  const clock = new WaitClock({ now, storage: memoryStorage({ "novaberg.waitSeconds": "[0.5,0.5,0.5]" }) });
  clock.waiting();
  time.now += SLOW_FLOOR_SECONDS - 0.5;
  assert.equal(clock.slow(), false);
  const broken = new WaitClock({ now, storage: memoryStorage({ "novaberg.waitSeconds": "{nope" }) });
  assert.equal(broken.usual(), USUAL_WITHOUT_HISTORY);
});

test("only the recent waits are kept", () => {
  const { time, now } = clockAt();
  const storage = memoryStorage();
  const clock = new WaitClock({ now, storage });
  for (let i = 0; i < 30; i += 1) {
    clock.waiting();
    time.now += i;
    clock.answered();
  }
  assert.equal(JSON.parse(storage.data["novaberg.waitSeconds"]).length, 20);
  assert.equal(clock.usual(), 19.5); // the median of 10..29
});
