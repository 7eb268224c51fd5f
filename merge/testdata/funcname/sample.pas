unit Inventory;

interface

type
  TStore = class
  private
    FCount: Integer;
  public
    constructor Create;
    procedure Add(N: Integer);
    function Total: Integer;
  end;

  TItem = record
    Name: string;
    Count: Integer;
  end;

implementation

constructor TStore.Create;
begin
  FCount := 0;
end;

procedure TStore.Add(N: Integer);
begin
  FCount := FCount + N;
  if FCount < 0 then
    FCount := 0;
end;

function TStore.Total: Integer;
begin
  Result := FCount;
end;

initialization
  WriteLn('loaded');

finalization
  WriteLn('unloaded');
end.
