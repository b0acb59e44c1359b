/* Live qless admin pages: the region marked data-qless-live refreshes itself every few seconds.

   It asks for the page's own URL again (so the same view and permission checks answer), with
   the X-Qless-Live header, and replaces the region's content with the fresh one: no reload,
   no build step, no library. A Pause button (its state in aria-pressed and its label, Resume
   while paused, remembered in localStorage) stops the rounds; none is made while the tab is hidden; a round is skipped
   while the user is busy inside the region (focus, a changed form field, a text selection);
   an error answer (signed out, no permission) stops the updates and says so. */
(function () {
  "use strict";

  var EVERY_MS = 5000;
  var STORE_KEY = "django_qless.live.paused";
  var region = null;
  var button = null;
  var state = null;
  var updated = null;
  var timer = null;
  var stopped = false;
  var rounds = 0;

  function isPaused() {
    try {
      return window.localStorage.getItem(STORE_KEY) === "1";
    } catch (error) {
      return button !== null && button.getAttribute("aria-pressed") === "true";
    }
  }

  function rememberPaused(paused) {
    try {
      if (paused) {
        window.localStorage.setItem(STORE_KEY, "1");
      } else {
        window.localStorage.removeItem(STORE_KEY);
      }
    } catch (error) {
      /* Storage refused (private mode): the button's state alone holds it. */
    }
  }

  function fieldChanged(field) {
    if (field.type === "checkbox" || field.type === "radio") {
      return field.checked !== field.defaultChecked;
    }
    if (field.tagName === "SELECT") {
      return Array.prototype.some.call(field.options, function (option) {
        return option.selected !== option.defaultSelected;
      });
    }
    return field.type !== "hidden" && field.value !== field.defaultValue;
  }

  /* Whether the user is doing something inside the region that a swap would undo. */
  function userBusy() {
    var active = document.activeElement;
    if (active && active !== document.body && region.contains(active)) {
      return true;
    }
    var selection = window.getSelection ? window.getSelection() : null;
    if (selection && !selection.isCollapsed && selection.rangeCount &&
        region.contains(selection.getRangeAt(0).commonAncestorContainer)) {
      return true;
    }
    return Array.prototype.some.call(region.querySelectorAll("input, select, textarea"), fieldChanged);
  }

  /* Carry what the user opened or scrolled over to the fresh content. */
  function keepViewState(fresh) {
    var opened = {};
    region.querySelectorAll("details").forEach(function (details) {
      var summary = details.querySelector("summary");
      opened[summary ? summary.textContent : ""] = details.open;
    });
    fresh.querySelectorAll("details").forEach(function (details) {
      var summary = details.querySelector("summary");
      var key = summary ? summary.textContent : "";
      if (Object.prototype.hasOwnProperty.call(opened, key)) {
        details.open = opened[key];
      }
    });
    var scrolled = Array.prototype.map.call(region.querySelectorAll(".qless-scroll"), function (box) {
      return box.scrollLeft;
    });
    return function restoreScroll() {
      region.querySelectorAll(".qless-scroll").forEach(function (box, index) {
        if (index < scrolled.length) {
          box.scrollLeft = scrolled[index];
        }
      });
    };
  }

  function swap(fresh) {
    var restoreScroll = keepViewState(fresh);
    region.replaceChildren.apply(region, Array.prototype.slice.call(fresh.childNodes));
    restoreScroll();
    rounds += 1;
    document.documentElement.setAttribute("data-qless-live-rounds", String(rounds));
    updated.textContent = "Updated " + new Date().toLocaleTimeString();
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = null;
    if (!stopped && !isPaused() && !document.hidden) {
      timer = window.setTimeout(refresh, EVERY_MS);
    }
  }

  function stop(reason) {
    stopped = true;
    window.clearTimeout(timer);
    timer = null;
    state.textContent = "Live updates stopped: " + reason + ". Reload the page to try again.";
    region.removeAttribute("aria-busy");
  }

  function refresh() {
    timer = null;
    if (stopped || isPaused() || document.hidden) {
      return;
    }
    if (userBusy()) {
      schedule();
      return;
    }
    region.setAttribute("aria-busy", "true");
    window.fetch(window.location.href, {
      headers: {"X-Qless-Live": "1"},
      credentials: "same-origin",
      cache: "no-store",
      redirect: "manual"
    }).then(function (response) {
      if (response.type === "opaqueredirect") {
        throw new Error("you are signed out, or the page moved");
      }
      if (!response.ok) {
        throw new Error(response.status === 403 ? "no permission" : "the server answered " + response.status);
      }
      return response.text();
    }).then(function (html) {
      var page = new DOMParser().parseFromString(html, "text/html");
      var fresh = page.getElementById(region.id);
      if (!fresh) {
        throw new Error("the page no longer updates itself");
      }
      region.removeAttribute("aria-busy");
      if (!stopped && !isPaused() && !userBusy()) {
        swap(fresh);
        if (!fresh.hasAttribute("data-qless-live")) {
          /* The page no longer changes (a job that completed): no more rounds. */
          stopped = true;
          state.textContent = "Live updates ended: this page no longer changes.";
        }
      }
      schedule();
    }).catch(function (error) {
      stop(error && error.message ? error.message : "the server could not be reached");
    });
  }

  /* The button says what pressing it does now; aria-pressed says whether updates are paused. */
  function showPaused(paused) {
    button.textContent = paused ? "Resume live updates" : "Pause live updates";
    button.setAttribute("aria-pressed", paused ? "true" : "false");
  }

  function setPaused(paused) {
    rememberPaused(paused);
    showPaused(paused);
    state.textContent = paused ? "Live updates paused." : "Live updates on.";
    if (paused) {
      window.clearTimeout(timer);
      timer = null;
    } else if (!stopped) {
      refresh();
    }
  }

  function buildControl() {
    var control = document.createElement("div");
    control.className = "qless-live-control";
    button = document.createElement("button");
    button.type = "button";
    button.className = "button qless-live-pause";
    showPaused(isPaused());
    button.addEventListener("click", function () {
      setPaused(button.getAttribute("aria-pressed") !== "true");
    });
    updated = document.createElement("span");
    updated.className = "qless-live-updated";
    state = document.createElement("span");
    state.className = "qless-live-state";
    state.setAttribute("role", "status");
    state.textContent = isPaused() ? "Live updates paused." : "";
    control.appendChild(button);
    control.appendChild(updated);
    control.appendChild(state);
    var bar = document.querySelector(".qless-bar");
    if (bar) {
      bar.appendChild(control);
    } else {
      region.parentNode.insertBefore(control, region);
    }
  }

  function start() {
    region = document.querySelector("[data-qless-live][id]");
    if (!region || !window.fetch || !window.DOMParser) {
      return;
    }
    buildControl();
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) {
        window.clearTimeout(timer);
        timer = null;
      } else if (!stopped && !isPaused()) {
        refresh();
      }
    });
    schedule();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
