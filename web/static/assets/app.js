document.getElementById("view").textContent = "";
