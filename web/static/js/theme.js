// theme.js: a classic (non-module) script loaded in <head>, so the theme the
// user picked (System / Light / Dark, remembered per browser) applies
// before the first paint. The switch is in the sidebar (dom.js setTheme).
(function () {
  try {
    var t = JSON.parse(window.localStorage.getItem('chatd.theme') || 'null');
    if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
  } catch (e) { /* storage disabled: follow the system */ }
})();
