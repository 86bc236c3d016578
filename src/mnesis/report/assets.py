"""The report's inline CSS and script: paged tables, the search box over the inlined
message index, the transcript with its compaction points, and the DAG's click-to-read.

The script reads one ``<script type="application/json" id="report-data">`` block and
writes every text through ``textContent`` (never as HTML). The page's address may carry
``#search=WORDS`` (the search panel first, the box filled) and/or ``#message=N`` (the
transcript first, open at the N-th message), joined by ``&``, so a view can be linked to.
"""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;margin:0}
body{background:#f6f7f9;color:#1b1f24}
header{background:#1b1f24;color:#fff;padding:20px 32px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#b8c0cc}
main{padding:8px 32px 40px;max-width:1100px}
.cards{display:flex;flex-wrap:wrap;gap:16px;margin:20px 0}
.card{background:#fff;border-radius:10px;padding:12px 18px;min-width:150px}
.card,section.panel{box-shadow:0 1px 3px #0002}
.card b{display:block;font-size:24px}
section.panel{background:#fff;border-radius:10px;padding:8px 20px 16px;margin:18px 0}
section.panel{overflow-x:auto}
h2{font-size:17px;margin:12px 0}
.grid{stroke:#e3e6eb}
.tick{font-size:11px;fill:#6b7280}
.axis,.legend{font-size:12px;fill:#374151}
.compaction{stroke-dasharray:4 3;stroke-width:1.5}
.window{stroke:#b91c1c;stroke-dasharray:8 4;stroke-width:1.2}
.edge{stroke:#b7bcc6;stroke-width:1.2}
.node{cursor:pointer}
.node:hover rect,.node:focus rect{opacity:.75}
table{border-collapse:collapse}
td,th{padding:4px 10px;text-align:left;border-bottom:1px solid #eef0f3}
pre{white-space:pre-wrap;background:#f6f7f9;padding:10px;border-radius:6px}
pre{max-height:320px;overflow:auto}
.meta{color:#4b5563}
.hint{color:#6b7280;font-size:13px}
.pager{display:flex;gap:8px;align-items:center;margin:8px 0;font-size:13px}
.pager button{padding:2px 10px}
#search{font-size:16px;padding:6px 10px;width:420px;border:2px solid #2f6fde;border-radius:6px}
#search-results li{margin:4px 0;cursor:pointer;list-style:none}
#search-results li:hover{background:#eef3fc}
mark{background:#ffd54a;color:#1b1f24}
.row{display:flex;gap:10px;padding:6px 8px;border-bottom:1px solid #eef0f3}
.row .who{min-width:92px;font-weight:600;font-size:13px}
.row .when{color:#6b7280;font-size:12px;min-width:120px}
.row .text{flex:1;white-space:pre-wrap;word-break:break-word;max-height:4.6em;overflow:hidden}
.row.open .text,.row.focus .text{max-height:none}
.row{cursor:pointer}
.row.user .who{color:#2f6fde}
.row.assistant .who{color:#374151}
.row.compaction{background:#fdeee6;border-left:4px solid #e0703a}
.row.compaction .who{color:#b4491a}
.row.focus{outline:3px solid #2f6fde;outline-offset:-3px}
#transcript .page-body{max-height:640px;overflow:auto;position:relative}
"""

SCRIPT = r"""
(function(){
var D=JSON.parse(document.getElementById('report-data').textContent);
function el(tag,cls,text){var e=document.createElement(tag);if(cls){e.className=cls;}
  if(text!==undefined){e.textContent=text;}return e;}
function when(ms){return new Date(ms).toISOString().replace('T',' ').slice(0,19)+' UTC';}
function num(n){return n.toLocaleString('en-US');}
function Pager(box,rows,size,draw){
  var page=0,pages=Math.max(1,Math.ceil(rows.length/size));
  var nav=el('div','pager'),prev=el('button',null,'previous'),next=el('button',null,'next');
  var label=el('span','page-label'),body=el('div','page-body');
  nav.appendChild(prev);nav.appendChild(label);nav.appendChild(next);
  box.appendChild(nav);box.appendChild(body);
  function show(p){page=Math.max(0,Math.min(pages-1,p));body.textContent='';
    var end=Math.min(rows.length,(page+1)*size);
    draw(body,rows.slice(page*size,end),page*size);
    label.textContent='page '+(page+1)+' of '+num(pages)+' (rows '+num(rows.length?page*size+1:0)
      +'–'+num(end)+' of '+num(rows.length)+')';
    prev.disabled=page===0;next.disabled=page>=pages-1;}
  prev.addEventListener('click',function(){show(page-1);});
  next.addEventListener('click',function(){show(page+1);});
  show(0);return {show:show,size:size};}
function table(cols,cells){return function(body,rows){var t=el('table');var h=el('tr');
  cols.forEach(function(c){h.appendChild(el('th',null,c));});t.appendChild(h);
  rows.forEach(function(r){var tr=el('tr');cells(r).forEach(function(c){
    tr.appendChild(el('td',null,c));});t.appendChild(tr);});body.appendChild(t);};}
var pb=document.getElementById('pruned-table');
if(pb){Pager(pb,D.pruned,50,table(['tool','call','message','tokens','pruned at'],
  function(r){return [r[0],r[1],r[2],num(r[3]),when(r[4])];}));}
var sb=document.getElementById('summary-table');
if(sb){Pager(sb,D.summaries,50,table(['summary','kind','level','depth','messages',
  'tokens before → after','after message','written'],function(r){return [r[0],r[1],r[2],
  r[3],num(r[4]),num(r[5])+' → '+num(r[6]),r[7]?'#'+num(r[7]):'?',when(r[8])];}));}
var M=D.messages,rowOf={};M.forEach(function(m,i){if(m[2]!=='compaction'){rowOf[m[0]]=i;}});
var focus=null;
function marked(text,terms){var box=el('span','text');var low=text.toLowerCase(),at=0;
  while(terms.length){var best=-1,len=0;terms.forEach(function(t){var k=low.indexOf(t,at);
      if(k>=0&&(best<0||k<best)){best=k;len=t.length;}});
    if(best<0){break;}box.appendChild(document.createTextNode(text.slice(at,best)));
    box.appendChild(el('mark',null,text.slice(best,best+len)));at=best+len;}
  box.appendChild(document.createTextNode(text.slice(at)));return box;}
function entry(m,terms){var compaction=m[2]==='compaction';
  var r=el('div','row '+m[2]);r.dataset.ordinal=m[0];
  r.appendChild(el('span','who',compaction?'compaction':'#'+num(m[0])+' '+m[2]));
  r.appendChild(el('span','when','turn '+num(m[1])+' · '+when(m[4])));
  var text=(compaction?m[3]+' after message #'+num(m[0])+': ':'')+m[5]+(m[6]?' …':'');
  r.appendChild(marked(text,terms||[]));if(m[0]===focus&&!compaction&&!terms){r.classList.add('focus');}
  r.addEventListener('click',function(){r.classList.toggle('open');});return r;}
var tb=document.getElementById('transcript'),T=null;
if(tb){T=Pager(tb,M,100,function(body,rows){rows.forEach(function(m){
  body.appendChild(entry(m));});});}
function openMessage(n,jump){var i=rowOf[n];if(i===undefined||!T){return;}focus=n;
  T.show(Math.floor(i/T.size));var r=tb.querySelector('.row.focus');
  if(r){r.parentNode.scrollTop=Math.max(0,r.offsetTop-120);
    if(jump){tb.scrollIntoView({block:'start'});}}}
function lift(id){var p=document.getElementById(id),m=document.querySelector('main');
  if(p&&m){m.insertBefore(p,m.firstChild);}}
var input=document.getElementById('search'),out=document.getElementById('search-results');
var lows=M.map(function(m){return m[5].toLowerCase();});
function search(){var q=input.value.toLowerCase().trim();out.textContent='';
  if(!q){return;}var terms=q.split(/\s+/),hits=[];
  for(var i=0;i<M.length&&hits.length<D.maxHits;i++){var ok=true;
    for(var k=0;k<terms.length;k++){if(lows[i].indexOf(terms[k])<0){ok=false;break;}}
    if(ok){hits.push(M[i]);}}
  var count=el('p','hint',hits.length>=D.maxHits?'first '+num(D.maxHits)+' matches'
    :num(hits.length)+' matching '+(hits.length===1?'row':'rows'));
  count.id='search-count';out.appendChild(count);
  Pager(out,hits,20,function(body,rows){var ul=el('ul');rows.forEach(function(m){
    var li=el('li');li.appendChild(entry(m,terms));li.addEventListener('click',function(){
      if(m[2]!=='compaction'){openMessage(m[0],true);}});ul.appendChild(li);});
    body.appendChild(ul);});}
var timer=null;
if(input){input.addEventListener('input',function(){clearTimeout(timer);
  timer=setTimeout(search,150);});}
document.querySelectorAll('#summary-dag .node').forEach(function(g){
  function show(){document.querySelectorAll('.summary-detail').forEach(function(s){
      s.hidden=true;});
    var d=document.getElementById('d-'+g.dataset.id);if(d){d.hidden=false;}}
  g.addEventListener('click',show);
  g.addEventListener('keydown',function(e){if(e.key==='Enter'){show();}});});
var view={};location.hash.slice(1).split('&').forEach(function(kv){var k=kv.indexOf('=');
  if(k>0){view[kv.slice(0,k)]=decodeURIComponent(kv.slice(k+1));}});
if(view.message){lift('transcript-panel');openMessage(parseInt(view.message,10),false);}
if(view.search&&input){lift('search-panel');input.value=view.search;search();}
})();
"""
