"""The demo `make run` serves: its data and story (`story`), the clock that spreads the story over
five weeks (`clock`), and the webhook recipient it registers (`receiver`)."""
