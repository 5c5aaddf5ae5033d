; Everything the call-graph collector needs from one file, in one pass (no text predicates: they
; run in Python per match). The patterns' order is the handler order in ``callgraph.collect``.

(function_definition
  name: (identifier) @name
  parameters: (parameters) @params
  body: (block) @body) @function
(class_definition name: (identifier) @name body: (block) @body) @class
(decorated_definition (decorator) @decorator definition: (_) @decorated)
(call) @call
(assignment left: (_) @left right: (_) @right)
(named_expression name: (identifier) @left value: (_) @right)
(assignment left: (identifier) @left type: (type) @type)
(augmented_assignment left: (identifier) @shadow)
(for_statement left: (_) @shadow)
(for_in_clause left: (_) @shadow)
(lambda parameters: (lambda_parameters) @shadow)
(except_clause (as_pattern alias: (as_pattern_target) @shadow))
(with_item value: (as_pattern alias: (as_pattern_target) @alias) @with)
(return_statement) @return
(yield) @yield
(global_statement) @global
(nonlocal_statement) @nonlocal
