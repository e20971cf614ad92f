/* Loaded before the page is drawn: marks that JavaScript runs, so no-JS parts hide without a flash.
   (A file, not an inline script, so that a Content-Security-Policy of script-src 'self' holds.) */
document.documentElement.classList.add("js");
