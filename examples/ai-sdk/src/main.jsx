// A minimal useChat frontend on chatd: the chat id lives in the URL hash,
// the history is hydrated from chatd on load, and `resume: true` makes
// useChat pick up a reply that is still running (after a reload, a second
// tab, a dropped connection or a server restart).
import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';

const api = '/api/v2/ai-sdk/chat';
// A token in the page is for trying this out locally only; a real app
// signs its users in (chatd's session cookie works on the same routes).
const headers = { Authorization: `Bearer ${import.meta.env.VITE_CHATD_TOKEN}` };

function chatId() {
  if (!location.hash.slice(1)) {
    location.hash = crypto.randomUUID().replaceAll('-', '').slice(0, 16);
  }
  return location.hash.slice(1);
}

function App() {
  const id = chatId();
  const [initial, setInitial] = useState();
  const [error, setError] = useState();
  useEffect(() => {
    fetch(`${api}/${encodeURIComponent(id)}/messages`, { headers })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`${r.status} ${r.statusText}`))))
      .then(setInitial, setError);
  }, [id]);
  if (error) return <p>Could not load the chat: {String(error)}</p>;
  if (!initial) return <p>Loading…</p>;
  return <Chat id={id} initial={initial} />;
}

function Chat({ id, initial }) {
  const [transport] = useState(() => new DefaultChatTransport({ api, headers }));
  const [chatdStatus, setChatdStatus] = useState('');
  const { messages, sendMessage, status, error } = useChat({
    id,
    messages: initial,
    resume: true, // GET /api/v2/ai-sdk/chat/{id}/stream on load: 204, or the running reply from its start
    transport,
    onData: (part) => {
      if (part.type === 'data-chatd-status') setChatdStatus(part.data.status);
    },
  });
  const [input, setInput] = useState('');
  // stop() would only close this page's connection: the reply goes on in
  // chatd. Interrupting is chatd's.
  const interrupt = () => fetch(`${api}/${encodeURIComponent(id)}/interrupt`, { method: 'POST', headers });

  return (
    <main>
      <h1>useChat on chatd</h1>
      {messages.map((m) => (
        <div key={m.id} className={`msg ${m.role}`}>
          {m.role === 'user' ? '> ' : ''}
          {m.parts.map((p, i) => {
            if (p.type === 'text') return <span key={i}>{p.text}</span>;
            if (p.type === 'reasoning') return <div key={i} className="reasoning">{p.text}</div>;
            if (p.type === 'dynamic-tool' || p.type.startsWith('tool-')) {
              return <div key={i} className="tool">[{p.toolName ?? p.type.slice(5)}: {p.state}]</div>;
            }
            return null;
          })}
        </div>
      ))}
      <p className="status">{status}{chatdStatus && ` · chatd: ${chatdStatus}`}{error && ` · ${error.message}`}</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (input.trim()) sendMessage({ text: input });
          setInput('');
        }}
      >
        <input value={input} onChange={(e) => setInput(e.target.value)} placeholder="Say something…" />
        <button type="submit">Send</button>
        <button type="button" onClick={interrupt}>Stop</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
