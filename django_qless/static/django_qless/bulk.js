/* Bulk runs carry on by themselves: on a run's page that is collecting or applying, the
   "Continue" form is posted again shortly after the page loads, so the run advances one
   bounded step per request until it needs a confirmation or is done. Without this script
   each press of "Continue" does one step; closing the page leaves the run to resume. */
(function () {
  "use strict";

  var DELAY_MS = 300;

  function advance() {
    var form = document.querySelector("form[data-qless-auto]");
    if (!form) {
      return;
    }
    window.setTimeout(function () {
      if (typeof form.requestSubmit === "function") {
        form.requestSubmit();
      } else {
        form.submit();
      }
    }, DELAY_MS);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", advance);
  } else {
    advance();
  }
})();
