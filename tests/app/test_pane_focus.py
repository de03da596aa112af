"""A focus change on the lesson pane restyles the pane, not the lesson inside it (Textual would
restyle every descendant: 20-50 ms for a long lesson on each Tab and Esc), and its look still
follows its focus."""

from __future__ import annotations


async def test_focus_moves_restyle_the_pane_alone_and_its_bar_follows(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        pane = screen.query_one("#lesson-pane")
        inside = set(pane.walk_children())
        assert inside and screen.focused is pane
        restyled = []
        update_nodes = app.stylesheet.update_nodes

        def spy(nodes, animate=False):
            nodes = list(nodes)
            restyled.extend(nodes)
            return update_nodes(nodes, animate=animate)

        app.stylesheet.update_nodes = spy
        try:
            bar = pane.styles.border_left
            await pilot.press("tab")
            await pilot.pause()
            assert screen.focused is not pane
            unfocused = pane.styles.border_left
            await pilot.press("escape")
            await pilot.pause()
            assert screen.focused is pane
        finally:
            app.stylesheet.update_nodes = update_nodes
        assert pane in restyled
        assert not inside & set(restyled)
        assert unfocused != bar == pane.styles.border_left
