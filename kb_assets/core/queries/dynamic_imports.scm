; Calls that import a module by computed name: importlib.import_module(...), import_module(...),
; __import__(...). They are recorded as known gaps of the import graph, never guessed at.
(call
  function: [
    (identifier) @name.call.dynamic_import
    (attribute attribute: (identifier) @name.call.dynamic_import)
  ]
  arguments: (argument_list) @arguments.call.dynamic_import
  (#any-of? @name.call.dynamic_import "import_module" "__import__")) @call.dynamic_import
