// mnemon ui: the page's only script (served from the package; the pages hold no inline script).
// A form marked data-confirm asks before it is sent (forgetting a record cannot be undone).
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
