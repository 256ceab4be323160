// Sortable tables: a click on a header sorts the rows by that column's data-value
// (numbers numerically, high first; text alphabetically), a second click reverses.
(function () {
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th.sort").forEach(function (th, column) {
      th.addEventListener("click", function () {
        var down = th.dataset.dir !== "down";
        th.dataset.dir = down ? "down" : "up";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) { return row.cells[column].dataset.value || ""; };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
          var order = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : ny - nx;
          if (x === "" || y === "") order = (x === "") - (y === "");  // empty cells last
          return down ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
