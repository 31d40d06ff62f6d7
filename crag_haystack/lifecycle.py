"""warm_up_async / close / close_async, as Haystack 3's own components have them."""

import asyncio
import inspect


class Lifecycle:
    """Models load in `warm_up` (in a worker thread for `warm_up_async`, so the event loop stays free);
    closing closes the nested chat generator, when it has anything to close. crag holds no connection of
    its own between runs (each search opens and closes its HTTP clients)."""

    chat_generator: object = None

    def warm_up(self) -> None:  # pragma: no cover - every component defines it
        """Load what the component needs (models, providers)."""
        raise NotImplementedError

    async def warm_up_async(self) -> None:
        """`warm_up` in a worker thread, so the event loop stays free."""
        await asyncio.to_thread(self.warm_up)

    def close(self) -> None:
        """Close the nested chat generator, if it has anything to close."""
        close = getattr(self.chat_generator, "close", None)
        if callable(close):
            close()

    async def close_async(self) -> None:
        """Async `close`."""
        close = getattr(self.chat_generator, "close_async", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result
        else:
            self.close()
