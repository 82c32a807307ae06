// common.js: how the course's frontend talks to the backend, written here
// from its description for the heima browser test.
//
// - every request goes to /api/... (nginx strips the prefix);
// - the login token, kept in sessionStorage, goes raw in the authorization
//   header (no "Bearer ");
// - an answer is HTTP 200 with {success, data} or {success:false,
//   errorMsg}: the page gets data, or errorMsg as the rejection;
// - 401 sends the user to the login page; any other failure is
//   "服务器异常" (server error).
axios.defaults.baseURL = "/api";
axios.defaults.timeout = 5000;

axios.interceptors.request.use(function (config) {
  const token = sessionStorage.getItem("token");
  if (token) {
    config.headers["authorization"] = token;
  }
  return config;
});

axios.interceptors.response.use(function (response) {
  if (!response.data.success) {
    return Promise.reject(response.data.errorMsg);
  }
  return response.data;
}, function (error) {
  if (error.response && error.response.status === 401) {
    setTimeout(function () {
      location.href = "/login.html?next=" + encodeURIComponent(location.pathname + location.search);
    }, 200);
    return Promise.reject("请先登录");
  }
  return Promise.reject("服务器异常");
});

// showMessage puts a message in #message, green for "ok", red otherwise.
function showMessage(text, kind) {
  const el = document.getElementById("message");
  el.textContent = text;
  el.className = kind === "ok" ? "ok" : "error";
}

// query returns the page's query parameter name ("" when absent).
function query(name) {
  return new URLSearchParams(location.search).get(name) || "";
}
