"""mnesis as the memory of agent frameworks: one module per framework, each behind its own
extra (``pip install 'mnesis-lcm[openai-agents]'`` ...). Importing this package imports no
framework; import the framework's module itself:

* :mod:`mnesis.integrations.openai_agents`: a ``Session`` for the OpenAI Agents SDK;
* :mod:`mnesis.integrations.pydantic_ai`: a history processor, a recorder, the tools;
* :mod:`mnesis.integrations.langchain`: a ``BaseChatMessageHistory`` and the tools;
* :mod:`mnesis.integrations.langgraph_store`: a LangGraph ``BaseStore`` (search by grep);
* :mod:`mnesis.integrations.google_adk`: a ``BaseSessionService``, a ``BaseMemoryService``,
  the tools.

What "pop", "clear" and "delete" mean on a store that never deletes is decided once, in
:mod:`mnesis.integrations.append_only`, for every adapter.
"""
