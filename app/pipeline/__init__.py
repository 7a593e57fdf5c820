"""The character's two paths (design §6, seed 001): what it perceives, decides and answers.
The characters themselves (`app.characters`), the reminder clock (`app.impulses`) and the
consolidation worker (`app.consolidation`) have rooms of their own.

    vocabulary.py   what runtime and pipeline share: the event, its typed payloads, the
                    pipeline interface
    schemas.py      the structured answers per purpose (neutral minimal instances)
    prompts.py      templates per purpose and language (prompts/de, prompts/en), the frame
                    of titled data blocks
    context.py      Services (app-wide) and NodeContext (per run; `ask` = one model call)
    state.py        the typed states the nodes work on
    graph.py        a path = a list of nodes; stages pushed as `character_stage`
    stages.py       the stage ids of `character_stage` and what each means to a person
    path1.py        perception → enricher → EI calc → salience → dispatcher
    path2.py        state → … → router → planner ⇄ agents → … → tribunal → dispatcher
    recall.py       path 2's long-term memory search (enricher, beside the router)
    planning.py     path 2's router and planner ⇄ agents
    answering.py    path 2's conversation vector, responder, thinker, tribunal
    ei.py           EI calc: the user's reading, the character's empathy switch
    stimulus.py     the one reader of what a run reacts to (user words, thought, continue)
    agents/         the notes/lists agent and the reminders agent
    tribunal.py     validators over an answer, and the label strip
    dispatcher.py   the one writer: session turn, short-term memory, message log, state,
                    stance (`haltung`, `app.memory.stance`)
    offline.py      what the offline model answers for these purposes
    offline_rules/  the offline model's rules over the user's words (routing, lists, times)
    service.py      PipelineHost: path 1 / path 2 / after-delivery over the app's services
"""
