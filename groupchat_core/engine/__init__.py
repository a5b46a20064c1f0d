"""The conversation itself: GroupChat, the turn loop, speaker selection, the transcript a bid
sees, the bid cache, output shapes and the console observers. Built on `providers` (who answers a
bid) and `store` (where a run is kept); users import it through `groupchat_core`."""
