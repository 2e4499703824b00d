#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "script/python_host.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace offwake::script {

PyRef& PyRef::operator=(PyRef&& r) noexcept {
  if (this != &r) {
    Py_XDECREF(o_);
    o_ = r.release();
  }
  return *this;
}

PyRef::~PyRef() { Py_XDECREF(o_); }

namespace {

PyModuleDef offwake_module = {PyModuleDef_HEAD_INIT, "perf_offwake",
                              "Run by perf offwake script: the host's version and what it adds to param_dict.",
                              -1, nullptr, nullptr, nullptr, nullptr, nullptr};

PyObject* init_offwake_module() {
  PyRef m(PyModule_Create(&offwake_module));
  if (!m || PyModule_AddStringConstant(m.get(), "version", OFFWAKE_VERSION) < 0 ||
      PyModule_AddStringConstant(m.get(), "host", "perf-offwake") < 0)
    return nullptr;  // the import fails with the exception set, as an init function's should
  return m.release();
}

// perf's scripts do `from perf_trace_context import *`; the module exists (empty: its
// functions serve tracepoint handlers, which off-wake data has none of).
PyModuleDef trace_context_module = {PyModuleDef_HEAD_INIT, "perf_trace_context",
                                    "Present for compatibility with perf script; empty.", -1,
                                    nullptr, nullptr, nullptr, nullptr, nullptr};

PyObject* init_trace_context_module() { return PyModule_Create(&trace_context_module); }

// Whether the reader of standard output went away: poll() says POLLERR for a pipe without a
// reader left, POLLHUP for a socket whose peer closed. Only then is a BrokenPipeError the end
// of the output rather than the script's own (a write to a subprocess that exited).
bool standard_output_gone() {
  pollfd out{STDOUT_FILENO, 0, 0};
  return poll(&out, 1, 0) == 1 && (out.revents & (POLLERR | POLLHUP)) != 0;
}

// A path as Python has it: decoded with the filesystem encoding and its error handler
// (surrogateescape), as python3 decodes argv and sys.path, so that a name that is not UTF-8
// is still the same file through os.fsencode(). Null with a Python exception set.
PyObject* fs_path(const std::string& path) {
  return PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size()));
}

// What python3 prints of sys.exit(x) for an x neither int nor None: str(x) and a newline on
// sys.stderr (backslashreplace: a lone surrogate is shown, not an error).
void print_exit_message(PyObject* code) {
  PyObject* err = PySys_GetObject("stderr");  // borrowed
  if (err && err != Py_None && PyFile_WriteObject(code, err, Py_PRINT_RAW) == 0)
    PyFile_WriteString("\n", err);
  PyErr_Clear();  // no stderr left to print to: nothing to say either
}

}  // namespace

Error ScriptHost::python_error(const std::string& what) {
  if (PyErr_ExceptionMatches(PyExc_BrokenPipeError) && standard_output_gone()) {
    // The reader of standard output went away (script | head): the script is done, quietly,
    // as perf script is. What Python still holds for stdout goes nowhere at its exit.
    PyErr_Clear();
    if (int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
      dup2(null, STDOUT_FILENO);
      close(null);
    }
    exit_status_ = 0;
    ended_ = true;
    return Error(script_ + ": standard output closed", EPIPE);
  }
  if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
    ended_ = true;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyRef code(value ? PyObject_GetAttrString(value, "code") : nullptr);
    PyErr_Clear();
    exit_status_ = 0;
    if (code && PyLong_Check(code.get())) {
      // What the process can return of it, as python3 itself exits: sys.exit(300) is 44, and
      // one beyond a C long (an OverflowError, cleared) is -1, thus 255.
      exit_status_ = static_cast<int>(PyLong_AsLong(code.get()) & 0xff);
      PyErr_Clear();
    } else if (code && code.get() != Py_None) {
      print_exit_message(code.get());
      exit_status_ = 1;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return Error(script_ + ": exited with status " + std::to_string(exit_status_));
  }
  PyErr_Print();  // the traceback, on stderr
  exit_status_ = 1;
  return Error(script_ + ": Python error in " + what);
}

Result<std::unique_ptr<ScriptHost>> ScriptHost::start(const std::string& script, const std::vector<std::string>& args) {
  FILE* fp = fopen(script.c_str(), "r");
  if (!fp) return Error::from_errno("opening script " + script);
  std::unique_ptr<FILE, int (*)(FILE*)> file(fp, fclose);
  // fopen() opens a directory too; Python would read it as an empty script.
  if (struct stat st {}; fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode))
    return Error("opening script " + script, EISDIR);

  if (PyImport_AppendInittab("perf_offwake", init_offwake_module) < 0 ||
      PyImport_AppendInittab("perf_trace_context", init_trace_context_module) < 0)
    return Error("registering the built-in Python modules");

  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;  // Ctrl-C stays ours
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(script.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  PyStatus st = PyConfig_SetBytesArgv(&config, static_cast<Py_ssize_t>(argv.size()), argv.data());
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    return Error(std::string("starting Python: ") + (st.err_msg ? st.err_msg : "failed"));

  std::unique_ptr<ScriptHost> host(new ScriptHost());
  host->script_ = script;
  OFFWAKE_TRY(host->set_up_main());

  PyRef result(PyRun_FileExFlags(file.release(), script.c_str(), Py_file_input, host->globals_, host->globals_, 1,
                                 nullptr));
  if (!result) {
    Error e = host->python_error("the script's top level");
    if (!host->ended_) return e;
    return host;  // as python3 would: the script ends there, with its status
  }

  auto handler = [&](const char* name) -> PyObject* {
    PyObject* f = PyDict_GetItemString(host->globals_, name);  // borrowed
    return (f && PyCallable_Check(f)) ? f : nullptr;
  };
  host->trace_begin_ = handler("trace_begin");
  host->process_event_ = handler("process_event");
  host->trace_end_ = handler("trace_end");
  return host;
}

Status ScriptHost::set_up_main() {
  // The script's folder, for sys.path[0] as `python3 script.py` has it.
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(script_, ec);
  if (ec) return Error("finding the folder of script " + script_, ec.value(), ErrorKind::kIo);

  PyObject* main = PyImport_AddModule("__main__");  // borrowed
  globals_ = main ? PyModule_GetDict(main) : nullptr;  // borrowed
  if (!globals_) return python_error("setting up __main__");
  PyObject* path = PySys_GetObject("path");  // borrowed; none set no exception
  PyRef dir(fs_path(absolute.parent_path().string()));
  if (!dir || (path && PyList_Insert(path, 0, dir.get()) < 0)) return python_error("setting sys.path");
  PyRef file_name(fs_path(script_));
  if (!file_name || PyDict_SetItemString(globals_, "__file__", file_name.get()) < 0)
    return python_error("setting __file__");
  return ok_status();
}

ScriptHost::~ScriptHost() {
  if (Py_IsInitialized()) {
    fflush(stdout);
    Py_FinalizeEx();
  }
}

Status ScriptHost::call(PyObject* fn, PyObject* args, const char* what) {
  if (!fn) return ok_status();
  PyRef r(PyObject_CallObject(fn, args));
  if (!r) return python_error(what);
  return ok_status();
}

Status ScriptHost::trace_begin() { return call(trace_begin_, nullptr, "trace_begin()"); }
Status ScriptHost::trace_end() { return call(trace_end_, nullptr, "trace_end()"); }

Status ScriptHost::process_event(PyRef dict) {
  if (!process_event_) return ok_status();
  PyRef args(PyTuple_Pack(1, dict.get()));
  if (!args) return python_error("process_event()");
  return call(process_event_, args.get(), "process_event()");
}

}  // namespace offwake::script
