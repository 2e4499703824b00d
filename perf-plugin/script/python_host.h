// An embedded CPython 3 that runs perf-script-style handlers: optional trace_begin(),
// process_event(param_dict) and trace_end(), looked up by name in the script. A Python error
// prints its traceback and becomes an Error; sys.exit(N) becomes exit status N. Exceptions
// never cross into C, and Python objects never outlive the interpreter.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

typedef struct _object PyObject;

namespace offwake::script {

// Owns one reference to a Python object.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(PyObject* o) : o_(o) {}  // steals a new reference
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyRef(PyRef&& r) noexcept : o_(r.release()) {}
  PyRef& operator=(PyRef&& r) noexcept;
  ~PyRef();
  PyObject* get() const { return o_; }
  PyObject* release() {
    PyObject* o = o_;
    o_ = nullptr;
    return o;
  }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  PyObject* o_ = nullptr;
};

class ScriptHost {
 public:
  // Starts the interpreter (our built-in modules registered first), with sys.argv =
  // [script, args...] and the script's folder first on sys.path, then runs the script's
  // top level.
  static Result<std::unique_ptr<ScriptHost>> start(const std::string& script, const std::vector<std::string>& args);
  ~ScriptHost();  // finalizes the interpreter

  Status trace_begin();
  // Calls process_event(dict) if the script defines it; takes the dict.
  Status process_event(PyRef dict);
  Status trace_end();
  bool has_process_event() const { return process_event_ != nullptr; }

  // The script ended the run (sys.exit(), or its standard output closed), at its top level
  // or in a handler whose call returned an Error because of it: there is nothing more to run,
  // and nothing to say either (Python printed a string argument to sys.exit()).
  bool ended() const { return ended_; }
  // The status sys.exit() asked for, once ended(): 0 for a closed standard output.
  int exit_status() const { return exit_status_; }

 private:
  ScriptHost() = default;
  // __main__'s globals_, its __file__, and the script's folder first on sys.path.
  Status set_up_main();
  Status call(PyObject* fn, PyObject* args, const char* what);
  Error python_error(const std::string& what);

  std::string script_;
  PyObject* globals_ = nullptr;        // borrowed from __main__
  PyObject* trace_begin_ = nullptr;    // borrowed from globals_
  PyObject* process_event_ = nullptr;
  PyObject* trace_end_ = nullptr;
  int exit_status_ = 1;
  bool ended_ = false;  // python_error() met SystemExit or BrokenPipeError
};

}  // namespace offwake::script
