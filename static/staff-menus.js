// Small keyboard comforts for the staff pages; each page works without this file.
// The row "Actions" menus (<details class="menu">) close on Escape, returning focus to their
// summary, and when focus leaves them. A "Copy" button copies the field it names.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var open = document.activeElement && document.activeElement.closest("details.menu[open]");
    if (!open) return;
    open.removeAttribute("open");
    open.querySelector("summary").focus();
  });
  document.addEventListener("focusout", function (event) {
    var menu = event.target.closest && event.target.closest("details.menu[open]");
    if (menu && !menu.contains(event.relatedTarget)) menu.removeAttribute("open");
  });
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var field = document.getElementById(button.dataset.copy);
      field.select();
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard) navigator.clipboard.writeText(field.value).then(done, done);
      else { document.execCommand("copy"); done(); }
    });
  });
})();
