"""The built-in option plugins: ordinary plugins of the entry-point group ``compute_advisor.options``,
written on the plugin SDK (``app.sdk``) alone. Each ships its words as package data,
``plugins/locales/<option>.<lang>.toml``, named on its plugin class (``OptionPlugin.messages``).
"""
